/* Graph control (issue 21): the introspection calls, held to what weft.h
 * promises in "task graphs" and nothing else: public API only.
 *
 *   inspect_*      successors and predecessors of random DAGs, names,
 *                  find_cycle (also deep, from a task, out of memory)
 *
 * Tasks cannot assert (they may run on a worker thread): they note the
 * first thing they find wrong in `flaw`, which the test checks after the
 * run. Sizes follow WEFT_STRESS_SCALE; the seed is printed (WEFT_SEED=
 * replays). Schedulers run at 0 workers (this thread bound), 1, 2 and 8.
 * control_util.h has the helpers these files share. */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"
#include "control_util.h"

/* ---- edge lists ------------------------------------------------------------------ */


static bool has_edge(const uint64_t *k, size_t m, uint32_t u, uint32_t v)
{
    uint64_t key = (uint64_t)u << 32 | v;
    return bsearch(&key, k, m, sizeof *k, cmp_u64) != NULL;
}

/* ==== introspection =========================================================== */

/* The index of each task pointer: sorted (pointer, index) pairs. */
struct tindex {
    uintptr_t *key;
    uint32_t *idx;
    size_t n;
};

static int cmp_pair(const void *a, const void *b)
{
    const uintptr_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static struct tindex tindex_make(weft_task *const *t, size_t n)
{
    uintptr_t *pairs = malloc(sizeof *pairs * 2 * (n + 1));
    WT_ASSERT(pairs != NULL);
    for (size_t i = 0; i < n; i++) {
        pairs[2 * i] = (uintptr_t)t[i];
        pairs[2 * i + 1] = i;
    }
    qsort(pairs, n, sizeof *pairs * 2, cmp_pair);
    struct tindex x = { malloc(sizeof *x.key * (n + 1)), malloc(sizeof *x.idx * (n + 1)), n };
    WT_ASSERT(x.key && x.idx);
    for (size_t i = 0; i < n; i++) {
        x.key[i] = pairs[2 * i];
        x.idx[i] = (uint32_t)pairs[2 * i + 1];
    }
    free(pairs);
    return x;
}

static int cmp_uptr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* The index of t, or UINT32_MAX if it is none of ours. */
static uint32_t tindex_of(const struct tindex *x, const weft_task *t)
{
    uintptr_t key = (uintptr_t)t;
    uintptr_t *p = bsearch(&key, x->key, x->n, sizeof *x->key, cmp_uptr);
    return p ? x->idx[p - x->key] : UINT32_MAX;
}

static void tindex_free(struct tindex *x)
{
    free(x->key);
    free(x->idx);
}

/* Compares succ/pred answers of every task with the world's lists, as sets. */
static void check_neighbours(struct world *w, const struct tindex *ix, bool pred, const char *what,
                             uint64_t *rng)
{
    weft_task **buf = malloc(sizeof *buf * (w->n + 2));
    bool *seen = calloc(w->n, 1);
    WT_ASSERT(buf && seen);
    weft_task *const sentinel = (weft_task *)(uintptr_t)0x5e;
    const char *kind = pred ? "predecessors" : "successors";
    for (uint32_t i = 0; i < w->n; i++) {
        const uint32_t *off = pred ? w->poff : w->soff, *adj = pred ? w->padj : w->sadj;
        size_t want = off[i + 1] - off[i];
        weft_task *t = w->nd[i].t;
        size_t got = pred ? weft_task_predecessors(t, NULL, 0) : weft_task_successors(t, NULL, 0);
        WT_ASSERT(got == want, "%s: task %u has %zu %s, weft says %zu", what, i, want, kind, got);
        for (size_t j = 0; j < w->n + 2; j++)
            buf[j] = sentinel;
        got = pred ? weft_task_predecessors(t, buf, w->n + 1) : weft_task_successors(t, buf, w->n + 1);
        WT_ASSERT_EQ(got, want);
        WT_ASSERT(buf[want] == sentinel, "%s: task %u: %s wrote past its count", what, i, kind);
        for (size_t j = 0; j < want; j++) {
            uint32_t v = tindex_of(ix, buf[j]);
            WT_ASSERT(v != UINT32_MAX, "%s: task %u: %s[%zu] is not a task of the graph", what, i, kind, j);
            WT_ASSERT(!seen[v], "%s: task %u: %u listed twice in its %s", what, i, v, kind);
            WT_ASSERT(pred ? has_edge(w->dk, w->m, v, i) : has_edge(w->dk, w->m, i, v),
                      "%s: task %u: %u is not one of its %s", what, i, v, kind);
            seen[v] = true;
        }
        for (size_t j = 0; j < want; j++)
            seen[tindex_of(ix, buf[j])] = false;
        (void)adj;
        /* A smaller cap copies only cap of them, distinct and right. */
        if (want >= 2) {
            size_t cap = 1 + wt_rand(rng) % (want - 1);
            for (size_t j = 0; j < w->n + 2; j++)
                buf[j] = sentinel;
            got = pred ? weft_task_predecessors(t, buf, cap) : weft_task_successors(t, buf, cap);
            WT_ASSERT(got == want, "%s: task %u, cap %zu: %s returned %zu, want %zu", what, i, cap,
                      kind, got, want);
            WT_ASSERT(buf[cap] == sentinel, "%s: task %u: %s wrote past cap %zu", what, i, kind, cap);
            for (size_t j = 0; j < cap; j++) {
                uint32_t v = tindex_of(ix, buf[j]);
                WT_ASSERT(v != UINT32_MAX && !seen[v], "%s: task %u, cap %zu: bad %s[%zu]", what, i,
                          cap, kind, j);
                WT_ASSERT(pred ? has_edge(w->dk, w->m, v, i) : has_edge(w->dk, w->m, i, v));
                seen[v] = true;
            }
            for (size_t j = 0; j < cap; j++)
                seen[tindex_of(ix, buf[j])] = false;
        }
    }
    free(buf);
    free(seen);
}

WT_TEST(graph_control, inspect_successors_and_predecessors_of_random_dags, .timeout = 120)
{
    uint64_t seed = wt_seed();
    static const uint32_t sizes[] = { 1, 2, 50, 700 };
    for (size_t si = 0; si < 4; si++)
        for (int rep = 0; rep < 3; rep++) {
            uint64_t rng = (seed ^ (si * 1000 + rep)) | 1;
            struct world w;
            world_generate(&w, sizes[si], 30, &rng);
            weft_graph *g = new_graph();
            world_build(&w, g, false);
            /* A fan out and in of 300 on one task, with every edge twice. */
            weft_task *hub = NULL;
            if (sizes[si] >= 50) {
                hub = add(g, noop, NULL);
                for (uint32_t i = 0; i < w.n && i < 300; i++) {
                    WT_ASSERT_EQ(weft_task_precede(hub, w.nd[i].t), WEFT_OK);
                    WT_ASSERT_EQ(weft_task_precede(hub, w.nd[i].t), WEFT_OK);
                }
            }
            char what[120];
            snprintf(what, sizeof what, "WEFT_SEED=%llu, DAG of %u, rep %d", (unsigned long long)seed,
                     sizes[si], rep);
            /* The world's lists with the hub's edges: index n is the hub. */
            struct world w2 = w;
            weft_task **all = malloc(sizeof *all * (w.n + 1));
            WT_ASSERT(all != NULL);
            for (uint32_t i = 0; i < w.n; i++)
                all[i] = w.nd[i].t;
            struct tindex ix;
            if (hub) {
                struct edges e = { 0 };
                for (size_t k = 0; k < w.e.n; k++)
                    edges_push(&e, w.e.u[k], w.e.v[k]);
                for (uint32_t i = 0; i < w.n && i < 300; i++)
                    edges_push(&e, w.n, i);
                w2.e = e;
                w2.n = w.n + 1;
                w2.nd = calloc(w2.n, sizeof *w2.nd);
                WT_ASSERT(w2.nd != NULL);
                memcpy(w2.nd, w.nd, sizeof *w.nd * w.n);
                w2.nd[w.n].t = hub;
                all[w.n] = hub;
                w2.dk = NULL;
                w2.soff = w2.sadj = w2.poff = w2.padj = NULL;
                world_index(&w2);
                ix = tindex_make(all, w2.n);
            } else {
                ix = tindex_make(all, w.n);
            }
            check_neighbours(&w2, &ix, false, what, &rng);
            check_neighbours(&w2, &ix, true, what, &rng);
            /* A run changes nothing, and the answers hold during one. */
            weft_sched *s = make_sched(2);
            atomic_store(&gate, 0);
            atomic_store(&blocker_in, 0);
            weft_task *b = add(g, blocker, NULL);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            while (!atomic_load(&blocker_in))
                sched_yield();
            check_neighbours(&w2, &ix, false, what, &rng);
            WT_ASSERT_EQ(weft_task_successors(b, NULL, 0), 0);
            WT_ASSERT_EQ(weft_task_predecessors(b, NULL, 0), 0);
            WT_ASSERT_EQ(weft_graph_find_cycle(g, NULL, 0), 0);
            atomic_store(&gate, 1);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            check_neighbours(&w2, &ix, true, what, &rng);
            WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
            tindex_free(&ix);
            free(all);
            if (hub)
                world_free(&w2);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            world_free(&w);
        }
}

WT_TEST(graph_control, inspect_names, .timeout = 30)
{
    weft_graph *g = new_graph();
    weft_task *a = add(g, noop, NULL), *b = add(g, NULL, NULL);
    WT_ASSERT(weft_task_name(a) == NULL && weft_task_name(b) == NULL, "unnamed tasks have no name");
    char buf[32];
    strcpy(buf, "first");
    weft_task_set_name(a, buf);
    strcpy(buf, "scribbled");   /* the name was copied */
    WT_ASSERT(weft_task_name(a) && strcmp(weft_task_name(a), "first") == 0);
    WT_ASSERT(weft_task_name(b) == NULL);
    weft_task_set_name(a, "a much longer second name, to grow the copy beyond the first");
    WT_ASSERT(strcmp(weft_task_name(a), "a much longer second name, to grow the copy beyond the first") == 0);
    weft_task_set_name(a, "");
    WT_ASSERT(weft_task_name(a) && strcmp(weft_task_name(a), "") == 0);
    weft_task_set_name(b, "join");
    weft_task_set_name(a, NULL);
    WT_ASSERT(weft_task_name(a) == NULL, "a cleared name reads NULL");
    WT_ASSERT(strcmp(weft_task_name(b), "join") == 0);
    /* Renamed during a run, from a task of the run. */
    weft_sched *s = make_sched(1);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    weft_task_set_name(b, "renamed");
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT(strcmp(weft_task_name(b), "renamed") == 0);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
}

/* Checks a find_cycle answer: length len >= 2 (self-edges are refused),
 * every consecutive pair an edge, the last before the first, no repeats;
 * then with a cap below len, the first cap entries form a path. */
static void check_cycle(weft_graph *g, const struct tindex *ix, const uint64_t *dk, size_t m,
                        size_t n, const char *what)
{
    size_t len = weft_graph_find_cycle(g, NULL, 0);
    WT_ASSERT(len >= 2 && len <= n, "%s: find_cycle returned %zu", what, len);
    weft_task **out = malloc(sizeof *out * (len + 1));
    bool *seen = calloc(n, 1);
    WT_ASSERT(out && seen);
    weft_task *const sentinel = (weft_task *)(uintptr_t)0x5e;
    out[len] = sentinel;
    size_t len2 = weft_graph_find_cycle(g, out, len);
    WT_ASSERT(len2 == len, "%s: find_cycle said %zu, then %zu", what, len, len2);
    WT_ASSERT(out[len] == sentinel, "%s: find_cycle wrote past cap", what);
    uint32_t *id = malloc(sizeof *id * len);
    WT_ASSERT(id != NULL);
    for (size_t i = 0; i < len; i++) {
        id[i] = tindex_of(ix, out[i]);
        WT_ASSERT(id[i] != UINT32_MAX, "%s: cycle[%zu] is not a task", what, i);
        WT_ASSERT(!seen[id[i]], "%s: task %u repeats in the cycle", what, id[i]);
        seen[id[i]] = true;
    }
    for (size_t i = 0; i < len; i++)
        WT_ASSERT(has_edge(dk, m, id[i], id[(i + 1) % len]), "%s: cycle[%zu] = %u -> cycle[%zu] = %u is no edge",
                  what, i, id[i], (i + 1) % len, id[(i + 1) % len]);
    /* A smaller cap. */
    size_t cap = len / 2 ? len / 2 : 1;
    for (size_t i = 0; i <= len; i++)
        out[i] = sentinel;
    len2 = weft_graph_find_cycle(g, out, cap);
    WT_ASSERT(len2 >= 2, "%s: with cap %zu find_cycle returned %zu", what, cap, len2);
    WT_ASSERT(out[cap] == sentinel, "%s: cap %zu: find_cycle wrote past cap", what, cap);
    size_t upto = cap < len2 ? cap : len2;
    memset(seen, 0, n);
    for (size_t i = 0; i < upto; i++) {
        uint32_t v = tindex_of(ix, out[i]);
        WT_ASSERT(v != UINT32_MAX && !seen[v], "%s: cap %zu: bad cycle[%zu]", what, cap, i);
        seen[v] = true;
        if (i)
            WT_ASSERT(has_edge(dk, m, tindex_of(ix, out[i - 1]), v), "%s: cap %zu: no edge into cycle[%zu]",
                      what, cap, i);
    }
    free(id);
    free(out);
    free(seen);
}

/* A graph over n tasks with the edges e (task i is t[i]); the checks. */
static void cycle_case(uint32_t n, struct edges *e, bool cyclic, const char *what, weft_sched *s)
{
    weft_graph *g = new_graph();
    weft_task **t = malloc(sizeof *t * (n + 1));
    atomic_int runs = 0;
    WT_ASSERT(t != NULL);
    for (uint32_t i = 0; i < n; i++)
        t[i] = add(g, count, &runs);
    for (size_t k = 0; k < e->n; k++)
        WT_ASSERT_EQ(weft_task_precede(t[e->u[k]], t[e->v[k]]), WEFT_OK);
    size_t m;
    uint64_t *dk = edges_distinct(e, &m);
    struct tindex ix = tindex_make(t, n);
    if (cyclic) {
        check_cycle(g, &ix, dk, m, n, what);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
        check_cycle(g, &ix, dk, m, n, what);   /* and after the refused run */
        WT_ASSERT_EQ(atomic_load(&runs), 0);
    } else {
        weft_task *sentinel = (weft_task *)(uintptr_t)0x5e, *out[4] = { sentinel, sentinel, sentinel, sentinel };
        WT_ASSERT(weft_graph_find_cycle(g, out, 4) == 0, "%s: an acyclic graph has a cycle", what);
        WT_ASSERT(out[0] == sentinel, "%s: find_cycle wrote for an acyclic graph", what);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&runs), (int)n);
        WT_ASSERT_EQ(weft_graph_find_cycle(g, NULL, 0), 0);
    }
    tindex_free(&ix);
    free(dk);
    free(t);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
}

/* Tasks [base, base + len) in a ring, in a shuffled order. */
static void push_ring(struct edges *e, uint32_t base, uint32_t len, uint64_t *rng)
{
    uint32_t *o = malloc(sizeof *o * len);
    WT_ASSERT(o != NULL);
    for (uint32_t i = 0; i < len; i++)
        o[i] = base + i;
    shuffle_u32(o, len, rng);
    for (uint32_t i = 0; i < len; i++)
        edges_push(e, o[i], o[(i + 1) % len]);
    free(o);
}

WT_TEST(graph_control, inspect_find_cycle, .timeout = 120)
{
    uint64_t seed = wt_seed();
    uint64_t rng = seed | 1;
    weft_sched *s = make_sched(2);
    char what[160];

    /* Acyclic: empty, one task, random DAGs. */
    struct edges e = { 0 };
    cycle_case(0, &e, false, "empty graph", s);
    cycle_case(1, &e, false, "one task", s);
    for (int rep = 0; rep < 5; rep++) {
        struct world w;
        world_generate(&w, 50 + 400 * rep, 20, &rng);
        snprintf(what, sizeof what, "WEFT_SEED=%llu, acyclic DAG %d", (unsigned long long)seed, rep);
        cycle_case(w.n, &w.e, false, what, s);
        world_free(&w);
    }

    /* Rings of 2 to 10^4. */
    static const uint32_t lens[] = { 2, 3, 10, 100, 1000, 10000 };
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        edges_free(&e);
        push_ring(&e, 0, lens[i], &rng);
        snprintf(what, sizeof what, "WEFT_SEED=%llu, ring of %u", (unsigned long long)seed, lens[i]);
        cycle_case(lens[i], &e, true, what, s);
    }

    /* A ring among many acyclic parts: a DAG before it (edges into the
     * ring), the ring, a DAG after it (edges out of it). */
    for (int rep = 0; rep < 4; rep++) {
        uint32_t len = rep == 0 ? 2 : 5 + wt_rand(&rng) % 300;
        struct world a, b;
        world_generate(&a, 800, 10, &rng);
        world_generate(&b, 800, 10, &rng);
        edges_free(&e);
        for (size_t k = 0; k < a.e.n; k++)
            edges_push(&e, a.e.u[k], a.e.v[k]);
        push_ring(&e, 800, len, &rng);
        for (size_t k = 0; k < b.e.n; k++)
            edges_push(&e, 800 + len + b.e.u[k], 800 + len + b.e.v[k]);
        for (int k = 0; k < 200; k++) {
            edges_push(&e, wt_rand(&rng) % 800, 800 + wt_rand(&rng) % len);
            edges_push(&e, 800 + wt_rand(&rng) % len, 800 + len + wt_rand(&rng) % 800);
            edges_push(&e, wt_rand(&rng) % 800, 800 + len + wt_rand(&rng) % 800);
        }
        snprintf(what, sizeof what, "WEFT_SEED=%llu, ring of %u among 1600 acyclic tasks",
                 (unsigned long long)seed, len);
        cycle_case(1600 + len, &e, true, what, s);
        world_free(&a);
        world_free(&b);
    }

    /* A back edge in a random DAG closes a cycle through a real path. */
    for (int rep = 0; rep < 5; rep++) {
        struct world w;
        world_generate(&w, 2000, 10, &rng);
        world_index(&w);
        uint32_t u = wt_rand(&rng) % w.n, v = u;
        for (int step = 0; step < 50 && w.soff[v] < w.soff[v + 1]; step++)
            v = w.sadj[w.soff[v] + wt_rand(&rng) % (w.soff[v + 1] - w.soff[v])];
        if (v == u) {   /* a sink: close a 2-cycle from a predecessor */
            world_free(&w);
            rep--;
            continue;
        }
        edges_push(&w.e, v, u);
        snprintf(what, sizeof what, "WEFT_SEED=%llu, back edge %u -> %u in a DAG of 2000",
                 (unsigned long long)seed, v, u);
        cycle_case(w.n, &w.e, true, what, s);
        world_free(&w);
    }

    /* Several rings with chords (shorter cycles inside), and a figure
     * eight (two rings sharing a task). */
    edges_free(&e);
    uint32_t base = 0;
    for (int r = 0; r < 6; r++) {
        uint32_t len = 2 + wt_rand(&rng) % 50;
        for (uint32_t i = 0; i < len; i++)
            edges_push(&e, base + i, base + (i + 1) % len);
        for (int c = 0; c < 3 && len > 4; c++) {
            uint32_t i = wt_rand(&rng) % len, j = wt_rand(&rng) % len;
            if (i != j)
                edges_push(&e, base + i, base + j);
        }
        base += len;
    }
    snprintf(what, sizeof what, "WEFT_SEED=%llu, 6 rings with chords", (unsigned long long)seed);
    cycle_case(base, &e, true, what, s);
    edges_free(&e);
    for (uint32_t i = 0; i < 10; i++)
        edges_push(&e, i, (i + 1) % 10);
    edges_push(&e, 0, 10);
    for (uint32_t i = 10; i < 19; i++)
        edges_push(&e, i, i + 1);
    edges_push(&e, 19, 0);
    cycle_case(20, &e, true, "figure eight", s);
    edges_free(&e);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* find_cycle from a task (a fiber's stack) on a long chain into a ring,
 * and on a long ring: its search must not recurse per task. */
struct fc_job {
    weft_graph *g;
    atomic_size_t len;
};

static void fc_from_task(void *arg)
{
    struct fc_job *j = arg;
    atomic_store(&j->len, weft_graph_find_cycle(j->g, NULL, 0));
}

WT_TEST(graph_control, inspect_find_cycle_deep_from_a_task, .timeout = 120)
{
    uint32_t n = (uint32_t)wt_scaled(200000, 20000);
    weft_sched *s = make_sched(1);
    for (int shape = 0; shape < 2; shape++) {
        weft_graph *g = new_graph();
        weft_task **t = malloc(sizeof *t * n);
        WT_ASSERT(t != NULL);
        for (uint32_t i = 0; i < n; i++)
            t[i] = add(g, noop, NULL);
        /* shape 0: a chain of n - 2 into a 2-ring at the end; 1: a ring of n. */
        for (uint32_t i = 0; i + 1 < n; i++)
            WT_ASSERT_EQ(weft_task_precede(t[i], t[i + 1]), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(t[n - 1], t[shape ? 0 : n - 2]), WEFT_OK);
        weft_graph *h = new_graph();
        struct fc_job j = { .g = g };
        add(h, fc_from_task, &j);
        WT_ASSERT_EQ(weft_graph_run(s, h), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(h), WEFT_OK);
        WT_ASSERT(atomic_load(&j.len) == (shape ? n : 2), "shape %d: find_cycle from a task said %zu", shape,
                  atomic_load(&j.len));
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
        WT_ASSERT_EQ(weft_graph_destroy(h), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        free(t);
    }
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* Out of memory for the scratch: 0, and the next call works. */
static walloc fc_alloc = WALLOC_INIT("find_cycle");

WT_TEST(graph_control, inspect_find_cycle_out_of_memory, .timeout = 30)
{
    weft_set_allocator(walloc_hooks(&fc_alloc));
    weft_graph *g = new_graph();
    weft_task *t[50];
    for (int i = 0; i < 50; i++)
        t[i] = add(g, noop, NULL);
    for (int i = 0; i < 50; i++)
        WT_ASSERT_EQ(weft_task_precede(t[i], t[(i + 1) % 50]), WEFT_OK);
    walloc_fail_at(&fc_alloc, 1);
    WT_ASSERT_EQ(weft_graph_find_cycle(g, NULL, 0), 0);
    WT_ASSERT(atomic_load(&fc_alloc.failed) >= 1, "find_cycle allocated nothing");
    walloc_fail_at(&fc_alloc, 0);
    WT_ASSERT_EQ(weft_graph_find_cycle(g, NULL, 0), 50);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_set_allocator(NULL);
}
